"""Training: of the dual encoders (needs the ``train`` extra: PyTorch) and of the pair scorers
(the rescorer, the pair classifiers, the divergence models), each as a job object and a ``run_*``
function that its command and ``bimine run`` share."""
