"""Repairing a log as the broker's recovery would: truncate-recovery (recovery and its plan,
quarantine, apply and restore steps) and rebuild-index (rebuild).
"""
