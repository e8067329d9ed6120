"""Analyses of the typed IR that both the checker (:mod:`gpu_native.check`) and the emitters
(:mod:`gpu_native.emit`) use; nothing here reads syntax or writes code."""
