"""The places an activation writes: a Kurahi backend, and OpenClaw 2026.9's SQLite store.

Each has a planning half (:class:`~kurahi.lifecycle.activation.target.Planner`) and a half
bound to an opened package (:class:`~kurahi.lifecycle.activation.target.ActivationTarget`);
the driver (:mod:`~kurahi.lifecycle.activation.driver`) chooses which.
"""
