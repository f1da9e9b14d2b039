"""pictura.eval"""
