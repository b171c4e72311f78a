"""benchbook.experiment"""
