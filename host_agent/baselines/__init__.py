"""Baselines built from the same code: SwitchML-like and ATP-like are SA-ATP job modes
(``host_agent.controller.MODES``; the ATP-like parameter server is
:class:`host_agent.helper.ParameterServer`); the host-only ring all-reduce is
:mod:`host_agent.baselines.ring`."""
