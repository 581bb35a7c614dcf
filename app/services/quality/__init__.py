"""Quality control: gold items (honeypots, their answers, annotator accuracy) and a project's figures."""
