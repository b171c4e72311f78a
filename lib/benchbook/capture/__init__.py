"""benchbook.capture"""
