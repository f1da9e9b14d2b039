"""pictura.modules"""
