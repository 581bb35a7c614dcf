"""VOLDOGER: captioning, VQA and visual-entailment data re-drawn as cartoon, pencil drawing and oil
painting, whose LLM-checked labels and paraphrases people verify."""
