"""The experience log: one-line verdicts on whether memory helped.

Import-free on purpose: hooks import submodules on every prompt.
"""
