"""A run's lifecycle: the runner's phases, the start-up watch, the log follower, the
orphan sweep and the two-stage interrupt.
"""
