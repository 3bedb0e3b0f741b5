"""The foreign runtimes whose history Kurahi reads and repairs: one room each, behind one interface."""
