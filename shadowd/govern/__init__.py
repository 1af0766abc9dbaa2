"""Governed admission: weighted fair queuing over attributed GPU time, inside the vLLM engine.

The consumer of the gate.  While the daemon's gate says GO and its state file is fresh, each
scheduled step charges every tenant its LLMVisor share of the step's predicted latency; otherwise
(missing, stale, unreadable, not GO, another platform) it charges VTC's token cost.  Admission from
vLLM's waiting queue goes to the backlogged tenant with the least weighted service (VTC's rule).

Runs in the engine-core process like the tap, so it imports only the standard library, vLLM, the
tap and itself (enforced by import-linter).
"""
