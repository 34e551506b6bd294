"""Word-level pieces shared by tagging, span NER and probing: tag schemes, word encoding, windows, shapes, document context, entity scores."""
