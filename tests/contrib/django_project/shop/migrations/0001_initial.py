"""The example shop's one table (made by ``manage.py makemigrations``)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = ()

    operations = (
        migrations.CreateModel(
            name="Order",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("item", models.CharField(max_length=100)),
                ("quantity", models.PositiveIntegerField()),
                ("shipped", models.BooleanField(default=False)),
            ],
        ),
    )
