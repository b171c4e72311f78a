"""benchbook.provenance"""
