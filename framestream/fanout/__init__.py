"""Fan-out: one frame's pictures to every viewer's socket at its link's rate.

`feed` numbers a frame's pictures and offers them to each viewer; `outbox` is one connection's queue, bounded by
time at the rate `link` measures (and the light stream's choice for a slow link). Below the frames and the server:
a frame owns its feed, a connection owns its outbox. Imports nothing, so a module of it loads alone.
"""
