// Steward's page script (being written).
