"""Replay of arrivals through the real vLLM scheduler under FCFS, VTC and the governed policy."""
