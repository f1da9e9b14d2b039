"""pictura.callbacks"""
