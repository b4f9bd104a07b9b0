"""LLM scale-up bridge: the same fadesim advantage functions in a real (torch) LLM RL loop.

Rollout backends (HF transformers on CPU/GPU, vLLM on GPU), verifiable rewards, procedurally generated
tasks, a minimal on-policy trainer logging the simulator's metric names, and a plug-in for verl's
advantage-estimator registry. Heavy dependencies (transformers, vLLM, verl) are imported lazily.
"""
