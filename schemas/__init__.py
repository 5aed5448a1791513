"""JSON Schema files shipped as package data (load with ``importlib.resources``)."""
