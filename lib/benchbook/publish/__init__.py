"""benchbook.publish"""
