"""The v1model architecture as BMv2's simple_switch runs it, on top of the P4 front end."""
