"""SD.Next's behaviour: its own checks, its rules with evidence (catalog) and its error texts
(messages). Its record and effects table: runtimes/sdnext.py.
"""
