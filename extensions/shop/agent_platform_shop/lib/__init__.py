"""Code shared by the shop extension's tools; never discovered."""
