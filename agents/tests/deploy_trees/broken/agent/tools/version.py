raise RuntimeError("this tree fails to import")
