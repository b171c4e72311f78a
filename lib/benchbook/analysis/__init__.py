"""benchbook.analysis"""
