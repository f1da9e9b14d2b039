"""pictura.render"""
