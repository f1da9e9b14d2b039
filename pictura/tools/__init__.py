"""pictura.tools"""
