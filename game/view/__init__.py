"""The pygame shell: renders a :class:`game.world.World` (or a replayed log) and takes
input. The only place in medsim that imports pygame."""
