# realbugs-case: trap | family: 2 | shape: -
# source: https://github.com/pytorch/pytorch/issues/74739
# looks like: Trainer(fp16=True); the model weights are float32, which is what AMP wants
from transformers import AutoModelForSequenceClassification, Trainer, TrainingArguments

model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased", num_labels=2)
args = TrainingArguments(output_dir="out", fp16=True, per_device_train_batch_size=8, learning_rate=2e-5)
trainer = Trainer(model=model, args=args, train_dataset=[])
trainer.train()
