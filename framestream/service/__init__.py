"""The process: settings (`config`), logs, start and orderly shutdown (`app`), the command line (`cli`), and two
process-wide helpers (`heap`: freed memory given back to the system; `statefile`: JSON state written atomically).
Imports nothing, so a module of it loads alone.
"""
