"""p4c's STF test format on the embedded v1model target (``saatp p4 stf``): ``parser`` reads a
test file into commands, ``runner`` runs them against a switch."""
