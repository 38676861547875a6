"""Business logic that writes (HackSoft style: ``<entity>_<action>``); reads are in selectors."""
