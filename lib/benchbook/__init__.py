"""benchbook: a measurement and reproducibility workbench for networking research."""

__version__ = "0.1.0"
