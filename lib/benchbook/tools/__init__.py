"""benchbook.tools"""
