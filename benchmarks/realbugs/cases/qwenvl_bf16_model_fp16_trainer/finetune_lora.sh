python finetune.py --output_dir out --fp16 True --per_device_train_batch_size 1
