"""The loop: a run's life (open, resume, stop, abandon), the campaign (attempts), the one-shot
runs (compare, calibrate), the kernel (a run's effects), trials (looks), the one measurement runner,
agents' launches.
"""
