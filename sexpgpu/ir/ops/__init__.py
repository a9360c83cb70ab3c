"""Op families; importing this package registers every op."""
