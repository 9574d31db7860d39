"""Human rendering: tables, live progress, the status result, reports and plots.
"""
