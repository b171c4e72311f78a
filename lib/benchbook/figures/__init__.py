"""benchbook.figures"""
