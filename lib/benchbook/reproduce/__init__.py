"""benchbook.reproduce"""
