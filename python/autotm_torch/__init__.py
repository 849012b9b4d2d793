"""autotm_torch -- PyTorch models into autotm (docs/pytorch.md)

    python3 -m autotm_torch torchvision.models:resnet18 --input 2,3,32,32 -o resnet18.json \\
        --weights-out resnet18.safetensors --data-out batch.safetensors

importer.to_forward traces a module with torch.fx into an autotm forward graph whose parameters
carry the module's state_dict names; safetensors reads and writes the weights and data files
autotm run takes (--weights-in, --data) and writes (--weights-out); check runs one SGD step in
PyTorch and in autotm and compares them.
"""
