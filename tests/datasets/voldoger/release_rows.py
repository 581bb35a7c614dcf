"""Release-shaped VOLDOGER rows: the originals verbatim from the release's JSON files
(data/styleshift_{cap,ve}/original_*.json: double spaces, a trailing space, a leading space in a
hypothesis, int labels), VQA originals and stylised rows in the fields the authors' code writes."""

from __future__ import annotations

CAP_ORIGINAL = [
    {"image_id": "COCO_train2014_000000000368.jpg", "captions": [
        "A young boy playing soccer on a grassy field", "A group of kids playing soccer on a field.",
        "Small child in soccer uniform kicking at yellow ball.", "A young man kicking a soccer ball around a field.",
        "There are several young boys practicing soccer, some with their dads."], "split": "train"},
    {"image_id": "COCO_train2014_000000000419.jpg", "captions": [
        "Two people playing tennis in a neighborhood park.", "Two people on the tennis court playing tennis",
        "Two people at a public tennis court; one serves the ball.", "A tennis player taking  a swing at  a ball",
        "two people playing tennis on a tennis court."], "split": "train"},
]
CAP_STYLISED = [
    {"image_id": "COCO_train2014_000000000419.jpg", "domain_id": 2, "original_prompt": "Two people playing tennis.",
     "style_prompt": "A pencil drawing of two people playing tennis.", "caption": "A tennis player taking  a swing at  a ball ",
     "caption_number": 3, "all_captions": CAP_ORIGINAL[1]["captions"], "split": "train"},
    {"caption": "A little boy plays soccer on a grassy field", "image_id": "COCO_train2014_000000000368.jpg", "domain_id": 2,
     "caption_number": 0, "all_captions": CAP_ORIGINAL[0]["captions"], "original_prompt": "A boy playing soccer.",
     "style_prompt": "A pencil drawing of a boy playing soccer.", "split": "train"},
]

VE_ORIGINAL = [
    {"image_id": "3215589470.jpg", "premise": "A man with a long-sleeve soccer uniform and hat on stands on the beach smiling.",
     "hypothesis": "A man is climbing a mountain.", "label": 2, "split": "train"},
    {"image_id": "3215589470.jpg", "premise": "A man with a long-sleeve soccer uniform and hat on stands on the beach smiling.",
     "hypothesis": " A man with ared uniform and hat stands on the beach smiling.", "label": 1, "split": "train"},
    {"image_id": "3215589470.jpg", "premise": "A man with a long-sleeve soccer uniform and hat on stands on the beach smiling.",
     "hypothesis": " A man stands on the beach smiling.", "label": 0, "split": "train"},
]
VE_STYLISED = [
    {"image_id": "3215589470.jpg", "premise": VE_ORIGINAL[0]["premise"], "hypothesis": "A man climbs a mountain.", "label": 2,
     "split": "train", "domain_id": 1, "original_prompt": "A man on a beach.", "style_prompt": "A cartoon of a man on a beach."},
    {"image_id": "3215589470.jpg", "premise": VE_ORIGINAL[1]["premise"], "hypothesis": " A man in a red uniform and hat stands smiling on the beach.",
     "label": 2, "split": "train", "domain_id": 1, "original_prompt": "A man on a beach.", "style_prompt": "A cartoon of a man on a beach."},
    {"image_id": "3215589470.jpg", "premise": VE_ORIGINAL[2]["premise"], "hypothesis": "A man is standing on the beach  smiling.", "label": 0,
     "split": "train", "domain_id": 1, "original_prompt": "A man on a beach.", "style_prompt": "A cartoon of a man on a beach."},
]

VQA_ORIGINAL = [
    {"image_id": "100034.jpg", "question_id": 1000340, "question": "Is the ball red?", "answer": "yes", "split": "test"},
    {"image_id": "100034.jpg", "question_id": 1000341, "question": "Is it sunny?", "answer": "yes", "split": "test"},
    {"image_id": "200012.jpg", "question_id": 2000120, "question": "Are there people?", "answer": "no", "split": "test"},
]
VQA_STYLISED = [
    {"image": "100034.jpg", "image_id": "100034.jpg", "question_id": 1000340, "question": "Is the ball coloured red? ",
     "answer": "no", "full_answer": "No, the ball is blue.", "question_type": "is the", "answer_type": "yes/no",
     "domain_id": 3, "original_prompt": "A red ball.", "style_prompt": "An oil painting of a red ball.", "split": "test"},
    {"image": "100034.jpg", "image_id": "100034.jpg", "question_id": 1000341, "question": "Is the weather  sunny?",
     "answer": "yes", "full_answer": "Yes, it is sunny.", "question_type": "is it", "answer_type": "yes/no",
     "domain_id": 3, "original_prompt": "A red ball.", "style_prompt": "An oil painting of a red ball.", "split": "test"},
    {"image": "200012.jpg", "image_id": "200012.jpg", "question_id": 2000120, "question": "Can you see any people?",
     "answer": "yes", "full_answer": "Yes, there is a person.", "question_type": "are there", "answer_type": "yes/no",
     "domain_id": 3, "original_prompt": "A street.", "style_prompt": "An oil painting of a street.", "split": "test"},
]
