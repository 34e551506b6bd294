"""Small data texts that the reader tests of several task families write out."""

# Two CoNLL-2003 sentences in its four columns (word, part of speech, chunk, entity tag).
CONLL_FOUR_COLUMNS = (
    "EU NNP B-NP B-ORG\n"
    "rejects VBZ B-VP O\n"
    "German JJ B-NP B-MISC\n"
    "\n"
    "Peter NNP B-NP B-PER\n"
    "Blackburn NNP I-NP I-PER\n"
)
