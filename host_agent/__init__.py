"""Host side of saatp: tensors -> quantized chunks -> frames -> switch -> frames -> tensors."""
