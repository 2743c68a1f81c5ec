"""Model providers behind one small streaming interface (see ``base``)."""
