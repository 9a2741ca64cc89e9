import numpy as np
import torch

from prediction_head import TextClassificationHead, calculate_class_weights

labels = np.random.randint(0, 3, 500)
head = TextClassificationHead(768, 3, class_weights=calculate_class_weights(labels, 3))
logits = head.feed_forward(torch.randn(8, 768))
print(head.logits_to_loss(logits, torch.randint(0, 3, (8,))))
