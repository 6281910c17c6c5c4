"""The one door to git: argument lists, objects at a ref, exports."""
