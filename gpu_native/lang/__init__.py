"""What kernel bodies use: scalar and array types, layouts, intrinsics."""
