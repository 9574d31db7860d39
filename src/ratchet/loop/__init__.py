"""The loop: the campaign (attempts), the kernel (a run's effects), trials (looks), the one
measurement runner, agents' launches.
"""
