"""Documents in: validate, chunk, extract phrases and facts, embed, write; text files read from
folders; synonym edges between phrases; a document's event time, tags and duplicates."""
