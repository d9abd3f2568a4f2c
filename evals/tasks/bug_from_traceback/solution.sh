sed -i 's|    return sum(values) / len(values)|    return sum(values) / len(values) if values else 0.0|' stats.py
