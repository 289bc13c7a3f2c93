"""What only the book's pages need: tables, charts, diagrams drawn from a kernel's parameters, explorers, listings,
questions, exercises and the prose helpers.

A wing of gemm_lab: it uses the core, the models and the precision wing.
"""
