"""benchbook.testbed"""
